/** What `uhlp images build` prints: one line per image, sizes in MB. */
import type { BuildImagesResult, BuiltImage } from './build-images.js';

export function formatBuiltImages(result: BuildImagesResult): string {
  const lines = [result.nodeBase, result.jitRunner, result.llmOrchestrator, result.csjsRunner, result.mcpHost, result.pythonBase, result.pythonRunner]
    .filter((image) => image !== undefined)
    .map((image) => `${image.reference}  ${(image.sizeBytes / 1e6).toFixed(1)} MB  ${image.built ? 'built' : 'up to date'}`);
  if (result.pythonSkipped !== undefined) lines.push(`uhlp/python-runner  not built: ${result.pythonSkipped}`);
  return lines.join('\n');
}

/** One image's line, for images built apart from the sandbox set (the chart's core and Redis images). */
export function formatBuiltImage(image: BuiltImage): string {
  return `${image.reference}  ${(image.sizeBytes / 1e6).toFixed(1)} MB  ${image.built ? 'built' : 'up to date'}`;
}
