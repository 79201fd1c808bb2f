/**
 * Whether the core pods that claimed sandbox pods still exist. A core labels what it
 * claims with its instance id (its pod name) and records its pod as
 * `uhlp.dev/claimer-pod`; a restarted container keeps its pod, its name and so its
 * claims (it adopts them), but a replaced core pod (a new name) never comes back
 * for them: the operator, the one owner of sandbox pods, deletes them once the core
 * pod is gone. A core pod being deleted still counts until it is gone: it drains
 * and hands its pods back itself.
 *
 * Answers are kept for a few seconds, so that many pools claimed by one core cost
 * one read of its pod.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { apiStatus } from '../k8s/custom-resources.js';

/** How long an answer is reused, ms. */
const ANSWER_TTL_MS = 3000;

export class ClaimerPods {
  private readonly answers = new Map<string, { exists: boolean; at: number }>();

  constructor(
    private readonly core: CoreV1Api,
    private readonly now: () => number = Date.now,
  ) {}

  /** False once the pod `<namespace>/<name>` is gone; true while it exists, or when that cannot be told. */
  async exists(claimerPod: string): Promise<boolean> {
    const cached = this.answers.get(claimerPod);
    if (cached && this.now() - cached.at < ANSWER_TTL_MS) return cached.exists;
    const [namespace, name] = claimerPod.split('/');
    if (!namespace || !name) return true;
    let exists = true;
    try {
      await this.core.readNamespacedPod({ name, namespace });
    } catch (error) {
      // Only a definite 404 makes a core gone; anything else (no access, an API hiccup) leaves its pods alone.
      if (apiStatus(error) !== 404) return true;
      exists = false;
    }
    if (this.answers.size > 1000) this.answers.clear();
    this.answers.set(claimerPod, { exists, at: this.now() });
    return exists;
  }
}
