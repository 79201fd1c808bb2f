// The optimization oracle through `uhlp dev` on the process driver with Redis state: see the suite.
import { describeOptimizationOracle } from './helpers/oracle-suite.js';

describeOptimizationOracle({ driver: 'process', state: 'redis' });
