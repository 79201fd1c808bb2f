// What the core takes from sandboxes, through `uhlp dev` on the process driver (see the suite).
import { describeCoreBounds } from './helpers/core-bounds-suite.js';

describeCoreBounds({ driver: 'process' });
