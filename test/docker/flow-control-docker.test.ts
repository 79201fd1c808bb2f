// Flow control across two `uhlp dev --driver docker` cores on Redis: see the suite. The
// priority order and its listing (CLI, console) are the gate's own, run on the process driver.
import { describeFlowControl } from '../helpers/flow-control-suite.js';
import { requireDocker } from './docker-env.js';

describeFlowControl({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000, priorityListing: false });
