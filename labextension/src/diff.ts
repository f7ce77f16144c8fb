/**
 * The renderer of `application/vnd.aimu.diff+json`: what an `edit_cell` call would change,
 * drawn as a unified diff (added lines green, removed lines red) inside its approval panel.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

export const DIFF_MIME_TYPE = 'application/vnd.aimu.diff+json';

export interface DiffRecord {
  title: string;
  diff: string;
}

/** The record in the MIME data, or null when it is not one this renderer understands. */
export function parseDiff(data: unknown): DiffRecord | null {
  const raw = data as Record<string, unknown> | null;
  if (!raw || raw.version !== 1 || typeof raw.diff !== 'string') {
    return null;
  }
  return { title: typeof raw.title === 'string' ? raw.title : 'Edit', diff: raw.diff };
}

/** The class of one line of a unified diff. */
export function lineKind(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---')) {
    return 'aimu-diff-file';
  }
  if (line.startsWith('@@')) {
    return 'aimu-diff-hunk';
  }
  if (line.startsWith('+')) {
    return 'aimu-diff-add';
  }
  if (line.startsWith('-')) {
    return 'aimu-diff-del';
  }
  return 'aimu-diff-context';
}

export class DiffRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('aimu-DiffRenderer');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const record = parseDiff(model.data[this.options.mimeType]);
    const title = document.createElement('div');
    title.className = 'aimu-diff-title';
    const pre = document.createElement('pre');
    pre.className = 'aimu-diff';
    if (record === null) {
      title.textContent = 'Cannot read this edit.';
    } else {
      title.textContent = record.title;
      const lines = record.diff.replace(/\n$/, '').split('\n');
      pre.replaceChildren(
        ...lines.map(line => {
          const span = document.createElement('span');
          span.className = lineKind(line);
          span.textContent = line + '\n';
          return span;
        })
      );
      if (!record.diff) {
        pre.textContent = '(no change)';
      }
    }
    this.node.replaceChildren(title, pre);
    return Promise.resolve();
  }
}

/** The factory registered beside the run renderer. */
export function createDiffFactory(): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [DIFF_MIME_TYPE],
    defaultRank: 40,
    createRenderer: options => new DiffRenderer(options)
  };
}
