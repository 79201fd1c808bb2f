// A ~300 MB sandbox answer through `uhlp dev` on the process driver (see the suite).
import { describeBoundedAnswers } from './helpers/bounded-answers-suite.js';

describeBoundedAnswers({ driver: 'process' });
