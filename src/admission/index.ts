// Admission for writes the gateway forwards: deletion protection and scale-down protection, with a break-glass
// bypass recorded in the audit event. The lead's chain inserts admissionStep(); config maps onto AdmissionRules.

export { admissionStep, type AdmissionOptions } from './step.js';
export {
  compileRules,
  defaultAdmissionRules,
  DEFAULT_SCALE_DOWN_RESOURCES,
  FLEETGATE_PROTECTION_LABEL,
  judgeScaleDown,
  KARMADA_PROTECTION_LABEL,
  parseReplicasPath,
  protectionLabelOf,
  scaleFloor,
  type AdmissionRules,
  type DeletionProtectionRules,
  type GroupVersionResource,
  type ProtectionLabel,
  type ScaleDownRule,
  type ScaleDownRules,
} from './rules.js';
export { annotationKey, type Finding, type RuleName } from './finding.js';
