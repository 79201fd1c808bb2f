/**
 * The two edits the oracle makes to an app.yaml, on the document (comments,
 * order and flow style kept, as a person would make them):
 *
 * - promote: the component becomes `handler: JIT` on the code pool with
 *   `jit: {script: generated/<component>-<hash>.js}`, and its llm block stays
 *   as the fallback in its old pool (`fallback: {pool}`);
 * - revert: the component is an LLM component in its fallback pool again,
 *   without `jit` and `fallback`.
 */
import { isMap, isSeq, parseDocument, type YAMLMap } from 'yaml';
import { UhlpError } from '../shared/errors.js';

/** The component's node in the document; throws when the file has none. */
function componentNode(text: string, componentId: string): { doc: ReturnType<typeof parseDocument>; node: YAMLMap } {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw refused(`app.yaml does not parse: ${doc.errors[0]!.message}`);
  const components = doc.getIn(['spec', 'components']);
  if (!isSeq(components)) throw refused('app.yaml has no spec.components list');
  const node = components.items.find((item) => isMap(item) && item.get('id') === componentId);
  if (!isMap(node)) throw refused(`app.yaml has no component "${componentId}"`);
  return { doc, node };
}

/** app.yaml with the component switched to its generated code; throws when it is not an LLM component there. */
export function promoteInAppYaml(text: string, componentId: string, edit: { script: string; codePool: string }): string {
  const { doc, node } = componentNode(text, componentId);
  if (node.get('handler') !== 'LLM') throw refused(`component "${componentId}" is not an LLM component in app.yaml (handler ${String(node.get('handler'))})`);
  const llmPool = node.get('pool');
  node.set('handler', 'JIT');
  node.set('pool', edit.codePool);
  node.set('jit', doc.createNode({ script: edit.script }, { flow: true }));
  node.set('fallback', doc.createNode({ pool: llmPool }, { flow: true }));
  return doc.toString();
}

/** app.yaml with a promoted component an LLM component again; throws when it is not promoted there. */
export function revertInAppYaml(text: string, componentId: string): string {
  const { doc, node } = componentNode(text, componentId);
  const fallback = node.get('fallback');
  if (node.get('handler') !== 'JIT' || !isMap(fallback)) throw refused(`component "${componentId}" is not a promoted component in app.yaml`);
  node.set('handler', 'LLM');
  node.set('pool', fallback.get('pool'));
  node.delete('jit');
  node.delete('fallback');
  return doc.toString();
}

function refused(message: string): UhlpError {
  return new UhlpError('UHLP_ORACLE_PROMOTION_REFUSED', message);
}
