// The optimization oracle through `uhlp dev --driver docker` with Redis state: see the suite.
import { describeOptimizationOracle } from '../helpers/oracle-suite.js';
import { requireDocker } from './docker-env.js';

describeOptimizationOracle({ driver: 'docker', state: 'redis', before: requireDocker, startTimeoutMs: 180_000 });
