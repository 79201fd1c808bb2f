// The optimization oracle through `uhlp dev` on the process driver with memory state: see the suite.
import { describeOptimizationOracle } from './helpers/oracle-suite.js';

describeOptimizationOracle({ driver: 'process', state: 'memory' });
