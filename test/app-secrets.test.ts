// App secrets through `uhlp dev` on the process driver (bubblewrap sandboxes): see the suite.
import { describeAppSecrets } from './helpers/secrets-suite.js';

describeAppSecrets({ driver: 'process' });
