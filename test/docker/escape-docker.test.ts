// The escape suite through `uhlp dev --driver docker`: see the suite.
import { describeEscapes } from '../helpers/escape-suite.js';
import { requireDocker } from './docker-env.js';

describeEscapes({ driver: 'docker', before: requireDocker, startTimeoutMs: 180_000 });
