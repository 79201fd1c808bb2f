// App secrets through `uhlp dev --driver docker`: see the suite.
import { describeAppSecrets } from '../helpers/secrets-suite.js';
import { testImages } from './docker-env.js';

describeAppSecrets({ driver: 'docker', before: testImages });
