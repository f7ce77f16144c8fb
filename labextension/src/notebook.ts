/**
 * New cells below the notebook cell that holds a given output node.
 *
 * Written against the small part of JupyterLab's notebook API it uses (cell widgets, their
 * models' metadata, the shared model's `insertCell`), found through the application shell,
 * so the extension needs no dependency on the notebook package and works in JupyterLab 4 and
 * Notebook 7 alike. Cells inserted for an agent cell carry `aimu.from_cell` metadata; later
 * insertions go after them, so cells land in the order they were made.
 */

import { KernelLike } from './inbox';

export interface CellSpec {
  cell_type: 'code' | 'markdown';
  source: string;
}

interface CellModelLike {
  readonly id: string;
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: unknown): void;
}

interface CellLike {
  readonly node: HTMLElement;
  readonly model: CellModelLike;
}

interface NotebookLike {
  readonly widgets: readonly CellLike[];
  readonly model: {
    readonly sharedModel: {
      insertCell(index: number, cell: CellSpec & { metadata: Record<string, unknown> }): unknown;
    };
  } | null;
}

/** The part of a notebook panel's session the extension uses: its kernel's comms. */
interface PanelLike {
  readonly sessionContext?: { readonly session?: { readonly kernel?: KernelLike | null } | null };
}

/** What the plugin gets from `app.shell`: the widgets of an area. */
export interface ShellLike {
  widgets(area?: string): Iterable<{ readonly node: HTMLElement }>;
}

const KEY = 'aimu';

function asNotebook(widget: unknown): NotebookLike | null {
  const content = (widget as { content?: Partial<NotebookLike> } | null)?.content;
  if (content && Array.isArray(content.widgets) && content.model?.sharedModel) {
    return content as NotebookLike;
  }
  return null;
}

function metadata(cell: CellLike): Record<string, unknown> {
  const value = cell.model.getMetadata(KEY);
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

export class NotebookCells {
  constructor(private readonly shell: ShellLike) {}

  /** The notebook and cell index holding `anchor`, if it is in a notebook cell. */
  locate(anchor: HTMLElement): { notebook: NotebookLike; index: number } | null {
    for (const widget of this.shell.widgets('main')) {
      if (!widget.node.contains(anchor)) {
        continue;
      }
      const notebook = asNotebook(widget);
      const index = notebook ? notebook.widgets.findIndex(cell => cell.node.contains(anchor)) : -1;
      if (notebook && index >= 0) {
        return { notebook, index };
      }
    }
    return null;
  }

  /** The kernel of the notebook holding `anchor`, if it is in a notebook with one. */
  kernelOf(anchor: HTMLElement): KernelLike | null {
    for (const widget of this.shell.widgets('main')) {
      if (widget.node.contains(anchor) && asNotebook(widget)) {
        return (widget as PanelLike).sessionContext?.session?.kernel ?? null;
      }
    }
    return null;
  }

  /**
   * Insert `cells` below the cell holding `anchor` (after cells inserted for it before).
   * With `blockId`, a block already inserted for that cell is not inserted again (the same
   * output drawn again when the notebook is reopened). Returns false outside a notebook.
   */
  insertBelow(anchor: HTMLElement, cells: readonly CellSpec[], blockId?: string): boolean {
    const found = this.locate(anchor);
    if (!found || !found.notebook.model) {
      return false;
    }
    const { notebook, index } = found;
    const owner = notebook.widgets[index];
    const own = metadata(owner);
    const done = Array.isArray(own.inserted) ? (own.inserted as string[]) : [];
    if (blockId !== undefined && done.includes(blockId)) {
      return true;
    }
    let at = index + 1;
    while (
      at < notebook.widgets.length &&
      metadata(notebook.widgets[at]).from_cell === owner.model.id
    ) {
      at += 1;
    }
    cells.forEach((cell, offset) => {
      notebook.model?.sharedModel.insertCell(at + offset, {
        cell_type: cell.cell_type,
        source: cell.source,
        metadata: { [KEY]: { from_cell: owner.model.id } }
      });
    });
    if (blockId !== undefined) {
      owner.model.setMetadata(KEY, { ...own, inserted: [...done, blockId] });
    }
    return true;
  }

  /** Whether the cell holding `anchor` already received the block `blockId`. */
  received(anchor: HTMLElement, blockId: string): boolean {
    const found = this.locate(anchor);
    if (!found) {
      return false;
    }
    const done = metadata(found.notebook.widgets[found.index]).inserted;
    return Array.isArray(done) && done.includes(blockId);
  }
}
