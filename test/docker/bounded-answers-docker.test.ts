// A ~300 MB sandbox answer through `uhlp dev --driver docker` (see the suite).
import { describeBoundedAnswers } from '../helpers/bounded-answers-suite.js';
import { requireDocker } from './docker-env.js';

describeBoundedAnswers({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
