// Cancelling workflow runs on the process driver with Redis state, two cores: see the suite.
import { describeWorkflowCancel } from './helpers/workflow-cancel-suite.js';

describeWorkflowCancel({ driver: 'process' });
