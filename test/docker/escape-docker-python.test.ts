// The escape suite through `uhlp dev --driver docker`, its hostile scripts in Python: see the suite.
import { describeEscapes } from '../helpers/escape-suite.js';
import { requireDocker } from './docker-env.js';

describeEscapes({ driver: 'docker', runner: 'python', before: requireDocker, startTimeoutMs: 180_000 });
