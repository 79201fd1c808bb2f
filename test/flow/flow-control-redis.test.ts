// Flow control across two cores on Redis, on the process driver: see the suite.
import { describeFlowControl } from '../helpers/flow-control-suite.js';

describeFlowControl({ driver: 'process' });
