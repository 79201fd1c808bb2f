// The escape suite through `uhlp dev` on the process driver (bubblewrap), its hostile scripts in Python: see the suite.
import { describeEscapes } from './helpers/escape-suite.js';

describeEscapes({ driver: 'process', runner: 'python' });
