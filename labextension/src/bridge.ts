/**
 * The open notebook, for the kernel's agent tools (`list_cells`, `edit_cell`, `run_cell`).
 *
 * While a run is drawn in a notebook, the extension opens one comm per kernel on target
 * `aimu.notebook`. The kernel sends requests `{id, op, ...}` and gets `{id, ...}` back:
 * `cells` lists the cells; `edit` replaces a cell's source through the notebook's shared model
 * (the same model real-time collaboration and every view of the notebook use, so unsaved
 * edits survive and other views see the change at once), refusing when the cell no longer
 * holds the source the user approved a diff of; `outputs` shows a run's outputs in a cell.
 */

import type { CommLike, KernelLike } from './inbox';

/** A comm as JupyterLab's kernel connection makes it (inbox.ts names only what it uses). */
interface BridgeComm extends CommLike {
  onClose: ((msg: unknown) => void | PromiseLike<void>) | null;
  readonly isDisposed?: boolean;
}

export const BRIDGE_TARGET = 'aimu.notebook';

interface SharedCellLike {
  readonly id: string;
  readonly cell_type: string;
  execution_count?: number | null;
  getSource(): string;
  setSource(source: string): void;
  setOutputs?(outputs: unknown[]): void;
}

/** The part of JupyterLab's shared notebook model the bridge uses. */
export interface SharedNotebookLike {
  readonly cells: readonly SharedCellLike[];
}

interface Request {
  id?: unknown;
  op?: unknown;
  cell_id?: unknown;
  source?: unknown;
  expect?: unknown;
  outputs?: unknown;
  execution_count?: unknown;
}

type Reply = Record<string, unknown>;

const bridges = new WeakMap<KernelLike, NotebookBridge>();

export class NotebookBridge {
  private readonly comm: BridgeComm;
  private closed = false;

  /** Open the bridge for `kernel` unless one is open (two views of a notebook share one). */
  static ensure(kernel: KernelLike, notebook: SharedNotebookLike): void {
    const open = bridges.get(kernel);
    if (open && !open.closed && !open.comm.isDisposed) {
      return;
    }
    bridges.set(kernel, new NotebookBridge(kernel, notebook));
  }

  private constructor(
    kernel: KernelLike,
    private readonly notebook: SharedNotebookLike
  ) {
    this.comm = kernel.createComm(BRIDGE_TARGET) as BridgeComm;
    this.comm.onMsg = msg => this.answer(msg.content.data as Request);
    this.comm.onClose = () => {
      this.closed = true;
    };
    this.comm.open({});
  }

  private answer(request: Request): void {
    if (typeof request?.id !== 'string') {
      return;
    }
    let reply: Reply;
    try {
      reply = this.handle(request);
    } catch (error) {
      reply = { error: `the notebook could not do it: ${String(error)}` };
    }
    this.comm.send({ id: request.id, ...reply });
  }

  private handle(request: Request): Reply {
    if (request.op === 'cells') {
      return {
        cells: this.notebook.cells.map((cell, index) => ({
          id: cell.id,
          index,
          cell_type: cell.cell_type,
          source: cell.getSource(),
          execution_count: cell.execution_count ?? null
        }))
      };
    }
    const cell = this.notebook.cells.find(c => c.id === request.cell_id);
    if (!cell) {
      return { error: 'no cell has this id any more' };
    }
    if (request.op === 'edit' && typeof request.source === 'string') {
      if (typeof request.expect === 'string' && cell.getSource() !== request.expect) {
        return { error: 'the cell was changed after the diff was shown; nothing was replaced' };
      }
      cell.setSource(request.source);
      return { ok: true };
    }
    if (request.op === 'outputs' && Array.isArray(request.outputs) && cell.setOutputs) {
      cell.setOutputs(request.outputs);
      if (typeof request.execution_count === 'number' || request.execution_count === null) {
        cell.execution_count = request.execution_count as number | null;
      }
      return { ok: true };
    }
    return { error: `unknown request ${JSON.stringify(request.op)}` };
  }
}
