/**
 * `cs.codeq.publish` onto the delivery sources' queues: a topic is the name of
 * one of the publishing app's own queue routes, and the payload is the message.
 * Only the app's own queues: a topic is never read as `<appId>/<name>`, so the
 * codeq capability cannot reach another app (that takes the queue capability
 * and core.queue.publish). A topic no queue route of the app has is
 * UHLP_SOURCE_ROUTE_NOT_FOUND from the sources.
 */
import type { SourceTools } from '../mcp/tool-definition.js';
import type { CodeqPublisher } from '../mcp/tools/fn-tools.js';

export function codeqOnQueues(sources: Pick<SourceTools, 'publishQueue'>): CodeqPublisher {
  return {
    async publish(appId, topic, payload) {
      const published = await sources.publishQueue(appId, topic, JSON.stringify(payload ?? null));
      return { messageId: published.messageId };
    },
  };
}
