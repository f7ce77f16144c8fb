/**
 * The renderer of `application/vnd.aimu.cells+json`: cells the agent proposed (`add_cell`) or
 * the user exported (`%agent_export`), inserted below the cell whose output holds them, once.
 *
 * Insertion waits until the output is attached (only then is it inside a cell); outside a
 * notebook the cells' sources are shown to copy instead.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { CellSpec, NotebookCells } from './notebook';

export const CELLS_MIME_TYPE = 'application/vnd.aimu.cells+json';

export interface CellsBlock {
  id: string;
  origin: string;
  cells: CellSpec[];
}

/** The block in the MIME data, or null when it is not one this renderer understands. */
export function parseCells(data: unknown): CellsBlock | null {
  if (typeof data !== 'object' || data === null) {
    return null;
  }
  const raw = data as Record<string, unknown>;
  if (raw.version !== 1 || typeof raw.id !== 'string' || !Array.isArray(raw.cells)) {
    return null;
  }
  const cells: CellSpec[] = [];
  for (const cell of raw.cells as unknown[]) {
    const c = cell as Record<string, unknown> | null;
    if (
      c &&
      (c.cell_type === 'code' || c.cell_type === 'markdown') &&
      typeof c.source === 'string'
    ) {
      cells.push({ cell_type: c.cell_type, source: c.source });
    }
  }
  return { id: raw.id, origin: typeof raw.origin === 'string' ? raw.origin : '', cells };
}

function plural(n: number): string {
  return `${n} cell${n === 1 ? '' : 's'}`;
}

export class CellsRenderer extends Widget implements IRenderMime.IRenderer {
  private block: CellsBlock | null = null;

  constructor(
    private readonly options: IRenderMime.IRendererOptions,
    private readonly notebook: NotebookCells
  ) {
    super();
    this.addClass('aimu-CellsRenderer');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.block = parseCells(model.data[this.options.mimeType]);
    if (this.isAttached) {
      this.place();
    }
    return Promise.resolve();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.place();
  }

  private place(): void {
    const block = this.block;
    if (block === null) {
      this.draw('Cannot read these cells.', []);
      return;
    }
    const already = this.notebook.received(this.node, block.id);
    if (already || this.notebook.insertBelow(this.node, block.cells, block.id)) {
      const verb = block.origin === 'export' ? 'Exported' : 'Added';
      this.draw(`${verb} ${plural(block.cells.length)} below (not run).`, []);
    } else {
      this.draw(`${plural(block.cells.length)} to add (copy into the notebook):`, block.cells);
    }
  }

  private draw(line: string, cells: readonly CellSpec[]): void {
    const note = document.createElement('p');
    note.className = 'aimu-cells-note';
    note.textContent = line;
    const blocks = cells.map(cell => {
      const pre = document.createElement('pre');
      pre.className = `aimu-cells-source aimu-cells-${cell.cell_type}`;
      pre.textContent = cell.source;
      return pre;
    });
    this.node.replaceChildren(note, ...blocks);
  }
}

/** The factory registered beside the run renderer. */
export function createCellsFactory(notebook: NotebookCells): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [CELLS_MIME_TYPE],
    defaultRank: 40,
    createRenderer: options => new CellsRenderer(options, notebook)
  };
}
