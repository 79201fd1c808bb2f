// Replaying and forking workflow runs through `uhlp dev --driver docker` with Redis state: see the suite.
import { describeWorkflowReplay } from '../helpers/workflow-replay-suite.js';
import { requireDocker } from './docker-env.js';

describeWorkflowReplay({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
