/**
 * The oracle's work under way on this core, per component: a generation, a
 * rollback, an adoption. One at a time per component; a rollback waits for
 * what runs before it; closing stops new work and waits for the rest.
 */
export class ComponentWork {
  /** Work under way, by `app\0component`. */
  private readonly busy = new Map<string, Promise<void>>();
  private stopped = false;

  /** The oracle is closing: no new work starts. */
  get closed(): boolean {
    return this.stopped;
  }

  /** Whether work of the component runs on this core now. */
  has(appId: string, componentId: string): boolean {
    return this.busy.has(key(appId, componentId));
  }

  /** The component's work under way, if any. */
  running(appId: string, componentId: string): Promise<void> | undefined {
    return this.busy.get(key(appId, componentId));
  }

  /** Keeps `work` as the component's work under way until it settles. */
  track(appId: string, componentId: string, work: Promise<void>): void {
    const id = key(appId, componentId);
    const tracked = work.finally(() => {
      if (this.busy.get(id) === tracked) this.busy.delete(id);
    });
    this.busy.set(id, tracked);
  }

  /** Stops new work (scans end, adoptions are skipped). */
  close(): void {
    this.stopped = true;
  }

  /** Resolves when the work under way has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.busy.values()]);
  }
}

function key(appId: string, componentId: string): string {
  return `${appId}\0${componentId}`;
}
