import { makeProcessDriver } from '../helpers/process-driver.js';
import { describeOrchestrator } from './orchestrator-suite.js';

describeOrchestrator('process (bubblewrap)', { makeDriver: () => makeProcessDriver({ isolation: 'namespaces' }) });
