// MCP federation through `uhlp dev` on the process driver (bubblewrap sandboxes): see the suite.
import { readFileSync, readdirSync } from 'node:fs';
import { describeFederation } from '../helpers/federation-suite.js';

describeFederation({
  driver: 'process',
  // The hostile server's sandboxes: bubblewrap processes whose work tree is under this core's data directory.
  async killServer(core) {
    let killed = 0;
    for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        continue;
      }
      if (cmdline.includes(core.dataDir) && cmdline.includes('hostile-server.mjs')) {
        process.kill(Number(pid), 'SIGKILL');
        killed += 1;
      }
    }
    return killed;
  },
});
