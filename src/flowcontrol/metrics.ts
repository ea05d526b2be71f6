// apiserver_flowcontrol_* metrics with kube-apiserver's names, help, labels and buckets
// (k8s.io/apiserver/pkg/util/flowcontrol/metrics/metrics.go), so APF dashboards and alerts work unchanged.
// Handles are bound per (priority level, flow schema) once per configuration: requests only increment.

import type { Registry } from 'prom-client';
import { CounterVec, GaugeVec, HistogramVec, type CounterChild, type HistogramChild } from '../metrics/vec.js';
import type { FlowHooks, RejectReason } from './queueset.js';

const PL = 'priority_level';
const FS = 'flow_schema';
const QUEUE_LENGTH_BUCKETS = [0, 10, 25, 50, 100, 250, 500, 1000];
const REQUEST_DURATION_BUCKETS = [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30];

export interface FlowControlMetrics {
  rejected: CounterVec<'priority_level' | 'flow_schema' | 'reason'>;
  dispatched: CounterVec<'priority_level' | 'flow_schema'>;
  inqueueRequests: GaugeVec<'priority_level' | 'flow_schema'>;
  inqueueSeats: GaugeVec<'priority_level' | 'flow_schema'>;
  executingRequests: GaugeVec<'priority_level' | 'flow_schema'>;
  executingSeats: GaugeVec<'priority_level' | 'flow_schema'>;
  queueLength: HistogramVec<'priority_level' | 'flow_schema'>;
  waitDuration: HistogramVec<'priority_level' | 'flow_schema' | 'execute'>;
  executionSeconds: HistogramVec<'priority_level' | 'flow_schema' | 'type'>;
  estimatedSeats: HistogramVec<'priority_level' | 'flow_schema'>;
  nominalLimitSeats: GaugeVec<'priority_level'>;
  currentLimitSeats: GaugeVec<'priority_level'>;
}

export function newFlowControlMetrics(registry: Registry): FlowControlMetrics {
  const registers = [registry];
  return {
    rejected: new CounterVec({ name: 'apiserver_flowcontrol_rejected_requests_total', help: 'Number of requests rejected by API Priority and Fairness subsystem', labelNames: [PL, FS, 'reason'], registers }),
    dispatched: new CounterVec({ name: 'apiserver_flowcontrol_dispatched_requests_total', help: 'Number of requests executed by API Priority and Fairness subsystem', labelNames: [PL, FS], registers }),
    inqueueRequests: new GaugeVec({ name: 'apiserver_flowcontrol_current_inqueue_requests', help: 'Number of requests currently pending in queues of the API Priority and Fairness subsystem', labelNames: [PL, FS], registers }),
    inqueueSeats: new GaugeVec({ name: 'apiserver_flowcontrol_current_inqueue_seats', help: 'Number of seats currently pending in queues of the API Priority and Fairness subsystem', labelNames: [PL, FS], registers }),
    executingRequests: new GaugeVec({
      name: 'apiserver_flowcontrol_current_executing_requests',
      help: 'Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem',
      labelNames: [PL, FS],
      registers,
    }),
    executingSeats: new GaugeVec({
      name: 'apiserver_flowcontrol_current_executing_seats',
      help: 'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem',
      labelNames: [PL, FS],
      registers,
    }),
    queueLength: new HistogramVec({
      name: 'apiserver_flowcontrol_request_queue_length_after_enqueue',
      help: 'Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued',
      labelNames: [PL, FS],
      buckets: QUEUE_LENGTH_BUCKETS,
      registers,
    }),
    waitDuration: new HistogramVec({ name: 'apiserver_flowcontrol_request_wait_duration_seconds', help: 'Length of time a request spent waiting in its queue', labelNames: [PL, FS, 'execute'], buckets: REQUEST_DURATION_BUCKETS, registers }),
    executionSeconds: new HistogramVec({
      name: 'apiserver_flowcontrol_request_execution_seconds',
      help: 'Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem',
      labelNames: [PL, FS, 'type'],
      buckets: REQUEST_DURATION_BUCKETS,
      registers,
    }),
    estimatedSeats: new HistogramVec({
      name: 'apiserver_flowcontrol_work_estimated_seats',
      help: 'Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness',
      labelNames: [PL, FS],
      buckets: [1, 2, 4, 10],
      registers,
    }),
    nominalLimitSeats: new GaugeVec({ name: 'apiserver_flowcontrol_nominal_limit_seats', help: 'Nominal number of execution seats configured for each priority level', labelNames: [PL], registers }),
    currentLimitSeats: new GaugeVec({ name: 'apiserver_flowcontrol_current_limit_seats', help: 'current derived number of execution seats available to each priority level', labelNames: [PL], registers }),
  };
}

/** Everything one request of a flow schema records, pre-bound to its labels. */
export interface FlowMetrics extends FlowHooks {
  dispatched: CounterChild;
  /** wait duration with execute="true" (it got into a queue) and "false" (turned away at once), as kube labels it. */
  waitEnqueued: HistogramChild;
  waitRejected: HistogramChild;
  execRegular: HistogramChild;
  execWatch: HistogramChild;
  estimatedSeats: HistogramChild;
}

export function bindFlowMetrics(m: FlowControlMetrics, pl: string, fs: string, onRejected: (reason: RejectReason) => void): FlowMetrics {
  const inqReq = m.inqueueRequests.labels(pl, fs);
  const inqSeats = m.inqueueSeats.labels(pl, fs);
  const exReq = m.executingRequests.labels(pl, fs);
  const exSeats = m.executingSeats.labels(pl, fs);
  const qlen = m.queueLength.labels(pl, fs);
  return {
    queued(delta, seats) {
      inqReq.inc(delta);
      inqSeats.inc(seats);
    },
    executing(delta, seats) {
      exReq.inc(delta);
      exSeats.inc(seats);
    },
    queueLength(n) {
      qlen.observe(n);
    },
    rejected(reason) {
      m.rejected.labels(pl, fs, reason).inc();
      onRejected(reason);
    },
    dispatched: m.dispatched.labels(pl, fs),
    waitEnqueued: m.waitDuration.labels(pl, fs, 'true'),
    waitRejected: m.waitDuration.labels(pl, fs, 'false'),
    execRegular: m.executionSeconds.labels(pl, fs, 'regular'),
    execWatch: m.executionSeconds.labels(pl, fs, 'watch'),
    estimatedSeats: m.estimatedSeats.labels(pl, fs),
  };
}
