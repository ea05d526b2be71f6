// Server-side Table printers: which printer a resource gets, and the gateway's CLUSTER column.
// The apiserver always prints the wide column set (printers/storage uses GenerateOptions{Wide: true}); kubectl hides
// priority != 0 columns itself unless -o wide.

import { DEFAULT_PRINTER, BUILTIN_PRINTERS } from './builtins.js';
import { POD_PRINTER } from './pod.js';
import { CORE_EVENT_PRINTER, EVENTS_V1_EVENT_PRINTER } from './event.js';
import { crdPrinter } from './crd.js';
import type { Projection } from '../projection.js';

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface RowCondition {
  type: 'Completed';
  status: 'True';
  reason?: string;
  message?: string;
}

export interface Printer {
  /** The full (wide) column set, in the order the apiserver sends it. */
  columns: TableColumnDefinition[];
  /** One row's cells; int64 cells are numbers, missing values null. */
  cells(obj: any, nowMs: number): unknown[];
  conditions?(obj: any): RowCondition[] | undefined;
  /**
   * What cells and conditions read of the object besides its metadata (always there), when that is much less than
   * the whole: a row made from stored JSON (tableRowFromJson) then parses only this. Absent: the whole object.
   */
  reads?: Projection;
}

const BY_RESOURCE: Record<string, Printer> = {
  ...BUILTIN_PRINTERS,
  '/pods': POD_PRINTER,
  '/events': CORE_EVENT_PRINTER,
  'events.k8s.io/events': EVENTS_V1_EVENT_PRINTER,
};

/**
 * The printer the apiserver uses for group/resource. A CRD's served version (its additionalPrinterColumns) selects
 * the apiextensions table convertor; resources without a registered printer get the generic Name/Created At one.
 */
export function printerFor(group: string, resource: string, crd?: { additionalPrinterColumns?: any[] }): Printer {
  if (crd) return crdPrinter(crd.additionalPrinterColumns);
  return BY_RESOURCE[`${group}/${resource}`] ?? DEFAULT_PRINTER;
}

const CLUSTER_COLUMN: TableColumnDefinition = {
  name: 'Cluster',
  type: 'string',
  format: '',
  description: 'The member cluster that holds this object',
  priority: 0,
};

// The age-like column the CLUSTER column goes in front of: events lead with "Last Seen", the default convertor
// ends with "Created At", everything else has "Age".
const ANCHORS = new Set(['Age', 'Last Seen', 'Created At']);

const withCluster = new WeakMap<Printer, WeakMap<(obj: any) => string, Printer>>();

/** The printer plus a CLUSTER column before the age column (appended when a CRD prints no age). */
export function withClusterColumn(p: Printer, clusterOf: (obj: any) => string): Printer {
  let byFn = withCluster.get(p);
  const cached = byFn?.get(clusterOf);
  if (cached) return cached;
  let at = p.columns.findIndex((c) => ANCHORS.has(c.name));
  if (at < 0) at = p.columns.length;
  const columns = [...p.columns.slice(0, at), CLUSTER_COLUMN, ...p.columns.slice(at)];
  const out: Printer = {
    columns,
    cells(obj, nowMs) {
      const cells = p.cells(obj, nowMs);
      cells.splice(at, 0, clusterOf(obj));
      return cells;
    },
  };
  if (p.conditions) out.conditions = p.conditions;
  // clusterOf reads the labels, in the metadata every projection has.
  if (p.reads) out.reads = p.reads;
  if (!byFn) withCluster.set(p, (byFn = new WeakMap()));
  byFn.set(clusterOf, out);
  return out;
}
