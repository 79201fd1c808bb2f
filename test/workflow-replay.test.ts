// Replaying and forking workflow runs on the process driver with Redis state: see the suite.
import { describeWorkflowReplay } from './helpers/workflow-replay-suite.js';

describeWorkflowReplay({ driver: 'process' });
