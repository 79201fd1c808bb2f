import { describeCsjsRunner } from './csjs-suite.js';
import { makeProcessDriver } from '../helpers/process-driver.js';

describeCsjsRunner('process sandbox (bubblewrap)', { makeDriver: () => makeProcessDriver() });
