// API Priority and Fairness for the gateway: the chain step and what the lead wires around it.

export { flowControlStep, markInitialEventsSent, newFlowControl, FLOW_CONTROL_DEFAULTS } from './filter.js';
export type { FlowControl, FlowControlOptions, FlowControlStepOptions } from './filter.js';
export type { EstimateObjects } from './seats.js';
export { defaultFlowControlDir, loadFlowControlDir } from './config.js';
