// Double texting on the process driver with Redis state, two cores: see the suite.
import { describeDoubleTexting } from './helpers/double-texting-suite.js';

describeDoubleTexting({ driver: 'process' });
