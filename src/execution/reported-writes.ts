/**
 * The write surface of a turn whose sandbox's tree the core cannot walk (pods:
 * `/work` is an emptyDir on the pod's node). The core asks the runner for the
 * walk (`reportWrites` in the request); the runner walks its tree after the
 * execution with the module the core uses (src/shared/work-tree-walk.ts, or the
 * python runner's port of it), answers what it found in `writes` and empties the
 * tree. The core compares the report with the turn's declarations exactly as it
 * compares its own walk (write-surface.ts compareWrites): same codes, same
 * evidence. Declared outputs are not kept: the core has no way to them.
 *
 * Where the core can walk the tree itself (process and Docker sandboxes) it
 * never asks: a report is written by a process that shares its sandbox with the
 * script, so it is believed only where nothing better exists.
 */
import type { ExecuteResponse } from '../contract/execute-contract.js';
import { UhlpError } from '../shared/errors.js';
import { compareWrites, type DeclaredOutput, type SurfaceCheck } from './write-surface.js';

/** The request body (a JSON object's text) asking the runner to walk its tree and report. */
export function askForWrites(body: string): string {
  return body.endsWith('}') ? `${body.slice(0, -1)},"reportWrites":true}` : body;
}

/** What the core makes of a runner's report. */
export interface ReportedCheck {
  readonly check: SurfaceCheck;
  /**
   * The sandbox must not serve again. A pod whose turn wrote anything it did not
   * declare is deleted, not emptied by its runner and reused: that turn's code ran
   * in the same pod as the runner (in a python runner, in its very process) and may
   * have left what the walk cannot see (a child still writing, a timer firing after
   * the answer, a runner patched to report less). Deleting the pod takes its
   * emptyDir with it; the operator makes a fresh one. Also when the runner could
   * not empty its tree.
   */
  readonly recycle: boolean;
}

/**
 * The runner's report compared with what the turn declared. No report from a
 * runner that was asked for one (an image older than the core, which ignores
 * the field) fails the turn: an unchecked turn on a pod must not pass silently.
 */
export function checkReportedWrites(response: ExecuteResponse, declared: readonly DeclaredOutput[]): ReportedCheck {
  const writes = response.writes;
  if (writes === undefined) {
    throw new UhlpError(
      'UHLP_WRITE_SURFACE_UNREPORTED',
      "the sandbox's runner did not report what the turn wrote, and the core cannot walk a pod's work tree; the runner image is older than the core: rebuild the images (uhlp images build) and load them into the cluster",
    );
  }
  const check = compareWrites(writes.realized, declared);
  return { check, recycle: check.undeclared.length > 0 || !writes.emptied };
}
