/// <reference lib="dom" />
/**
 * Debian's Chromium driven by playwright-core (no browser is downloaded):
 * headless, with an empty profile directory, and without Chromium's own
 * connections (background networking, component updates, sync), which a
 * machine with no network refuses. `scripts/test-env.sh` installs it; a
 * missing /usr/bin/chromium fails the suite loudly.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface ConsoleBrowser {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Console messages of every frame, as `type: text`. */
  readonly messages: string[];
  close(): Promise<void>;
}

export async function launchConsoleBrowser(options: { width?: number; height?: number; /** More Chromium flags (e.g. --host-resolver-rules). */ args?: readonly string[] } = {}): Promise<ConsoleBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: scripts/test-env.sh installs Debian's chromium`);
  const profile = mkdtempSync(path.join(os.tmpdir(), 'uhlp-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, ...(options.args ?? [])],
    viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const messages: string[] = [];
  page.on('console', (message) => messages.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => messages.push(`pageerror: ${error.message}`));
  return {
    context,
    page,
    messages,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const require = createRequire(import.meta.url);
let axeSource: string | undefined;

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly targets: string[];
}

/**
 * axe-core's WCAG 2 A and AA rules on the page's own document. The script is
 * evaluated over the DevTools protocol, which the page's Content-Security-Policy
 * does not govern (a <script> tag would be refused, as it should be); the
 * views' frames are other origins with their own documents, and are left out.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, iframes: false });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, targets: violation.nodes.map((node) => node.target.join(' ')) }));
  });
}
