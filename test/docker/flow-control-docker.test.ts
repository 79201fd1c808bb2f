// Flow control across two `uhlp dev --driver docker` cores on Redis: see the suite.
import { describeFlowControl } from '../helpers/flow-control-suite.js';
import { requireDocker } from './docker-env.js';

describeFlowControl({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
