/**
 * Every label and annotation the project puts on sandboxes (Docker containers
 * and pods) and on SandboxPool resources, in one place: the drivers write them,
 * adoption after a core restart and the operator select on them, and a label
 * spelled twice is a selector that silently matches nothing.
 */
import { API_GROUP } from '../apps/schema/app-definition-schema.js';

/** The app of a sandbox, and of a SandboxPool (the operator labels each pool with its app and pool name). */
export const LABEL_APP = `${API_GROUP}/app`;
/** The pool of a sandbox, and of a SandboxPool. */
export const LABEL_POOL = `${API_GROUP}/pool`;
/** The instance id of the core that runs (or claimed) the sandbox: a restarted core adopts what it names. */
export const LABEL_INSTANCE = `${API_GROUP}/instance`;
/**
 * Hash of what the sandbox was made with (the driver's config hash, or podConfigHash):
 * adoption and claiming skip sandboxes of another configuration.
 */
export const LABEL_CONFIG = `${API_GROUP}/config-hash`;

/** Docker: the host directory holding the runner's socket; read back on adoption. */
export const LABEL_SOCKET_DIR = `${API_GROUP}/socket-dir`;
/** Docker: the host directory of the container's writable tree; read back on adoption. */
export const LABEL_WORK_DIR = `${API_GROUP}/work-dir`;

/** Pods: every sandbox pod has this label with ROLE_SANDBOX; the NetworkPolicy and the drivers select on it. */
export const LABEL_ROLE = `${API_GROUP}/role`;
export const ROLE_SANDBOX = 'sandbox';
/** Pods: `warm` (the operator's, free to claim) or `claimed` (a core's). */
export const LABEL_SANDBOX_STATE = `${API_GROUP}/sandbox-state`;
/** Pods: the instance id of the core that claimed the pod; a restarted core adopts the pods it names. */
export const LABEL_CLAIMED_BY = `${API_GROUP}/claimed-by`;
/** Pods: the SandboxPool the pod belongs to, when it has one. */
export const LABEL_SANDBOX_POOL = `${API_GROUP}/sandbox-pool`;
/**
 * Pods (annotation): the core pod that claimed the pod, `<namespace>/<name>`, when the
 * core runs in a pod: the operator deletes claimed pods whose core pod is gone (a
 * replaced core has a new name, so a new instance id, and adopts nothing).
 */
export const ANNOTATION_CLAIMER_POD = `${API_GROUP}/claimer-pod`;
