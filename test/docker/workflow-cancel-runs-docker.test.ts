// Cancelling workflow runs through two `uhlp dev --driver docker` cores with Redis state — mid-model-call,
// through the other core, the on_cancel node, a paused run, the command line, the ledger: see the suite.
import { describeWorkflowCancel } from '../helpers/workflow-cancel-suite.js';
import { requireDocker } from './docker-env.js';

describeWorkflowCancel({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
