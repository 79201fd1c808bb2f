// Double texting through two `uhlp dev --driver docker` cores with Redis state: see the suite.
import { describeDoubleTexting } from '../helpers/double-texting-suite.js';
import { requireDocker } from './docker-env.js';

describeDoubleTexting({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
