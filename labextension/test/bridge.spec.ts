import './dom-events';
import { NotebookBridge, SharedNotebookLike } from '../src/bridge';
import { DiffRenderer, DIFF_MIME_TYPE, lineKind, parseDiff } from '../src/diff';
import type { CommLike, KernelLike } from '../src/inbox';
import { parseRecord } from '../src/model';
import { planMarkdown } from '../src/plan';

class FakeComm implements CommLike {
  sent: Record<string, unknown>[] = [];
  opened: Record<string, unknown> | null = null;
  onMsg: ((msg: { content: { data: unknown } }) => void) | null = null;
  onClose: (() => void) | null = null;
  isDisposed = false;
  open(data: Record<string, unknown>): void {
    this.opened = data;
  }
  send(data: Record<string, unknown>): void {
    this.sent.push(data);
  }
  close(): void {
    this.isDisposed = true;
  }
  receive(data: unknown): void {
    this.onMsg?.({ content: { data } });
  }
}

class FakeKernel implements KernelLike {
  comms: FakeComm[] = [];
  createComm(target: string): CommLike {
    expect(target).toBe('aimu.notebook');
    const comm = new FakeComm();
    this.comms.push(comm);
    return comm;
  }
}

function notebook(): SharedNotebookLike & { cells: { source: string; outputs?: unknown[] }[] } {
  const cell = (id: string, cell_type: string, source: string) => ({
    id,
    cell_type,
    source,
    execution_count: null as number | null,
    outputs: undefined as unknown[] | undefined,
    getSource() {
      return this.source;
    },
    setSource(text: string) {
      this.source = text;
    },
    setOutputs(outputs: unknown[]) {
      this.outputs = outputs;
    }
  });
  return { cells: [cell('a', 'markdown', '# Title'), cell('b', 'code', 'x = 1')] };
}

describe('NotebookBridge', () => {
  it('lists cells, edits through the shared model and refuses a stale edit', () => {
    const kernel = new FakeKernel();
    const model = notebook();
    NotebookBridge.ensure(kernel, model);
    NotebookBridge.ensure(kernel, model);
    expect(kernel.comms).toHaveLength(1);
    const comm = kernel.comms[0];
    comm.receive({ id: '1', op: 'cells' });
    expect(comm.sent[0]).toEqual({
      id: '1',
      cells: [
        { id: 'a', index: 0, cell_type: 'markdown', source: '# Title', execution_count: null },
        { id: 'b', index: 1, cell_type: 'code', source: 'x = 1', execution_count: null }
      ]
    });
    comm.receive({ id: '2', op: 'edit', cell_id: 'b', source: 'x = 2', expect: 'x = 1' });
    expect(comm.sent[1]).toEqual({ id: '2', ok: true });
    expect(model.cells[1].source).toBe('x = 2');
    comm.receive({ id: '3', op: 'edit', cell_id: 'b', source: 'x = 3', expect: 'x = 1' });
    expect(comm.sent[2].error).toMatch(/changed after the diff was shown/);
    expect(model.cells[1].source).toBe('x = 2');
    comm.receive({ id: '4', op: 'outputs', cell_id: 'b', outputs: [{ output_type: 'stream' }] });
    expect(model.cells[1].outputs).toEqual([{ output_type: 'stream' }]);
  });

  it('opens a new comm once the old one is closed', () => {
    const kernel = new FakeKernel();
    NotebookBridge.ensure(kernel, notebook());
    kernel.comms[0].onClose?.();
    NotebookBridge.ensure(kernel, notebook());
    expect(kernel.comms).toHaveLength(2);
  });
});

describe('DiffRenderer', () => {
  it('draws added and removed lines apart', async () => {
    const diff = '--- cell 2 now\n+++ cell 2 edited\n@@ -1 +1 @@\n-x = 1\n+x = 2\n';
    expect(parseDiff({ version: 1, title: 'Edit cell 2', diff })).toEqual({
      title: 'Edit cell 2',
      diff
    });
    expect(parseDiff({ version: 2, diff })).toBeNull();
    expect(['-x', '+x', '@@', ' x', '+++ b'].map(lineKind)).toEqual([
      'aimu-diff-del',
      'aimu-diff-add',
      'aimu-diff-hunk',
      'aimu-diff-context',
      'aimu-diff-file'
    ]);
    const renderer = new DiffRenderer({ mimeType: DIFF_MIME_TYPE } as never);
    await renderer.renderModel({
      data: { [DIFF_MIME_TYPE]: { version: 1, title: 'T', diff } }
    } as never);
    expect(renderer.node.querySelector('.aimu-diff-del')?.textContent).toBe('-x = 1\n');
    expect(renderer.node.querySelector('.aimu-diff-add')?.textContent).toBe('+x = 2\n');
  });
});

describe('planMarkdown', () => {
  it('draws a plan as a checklist', () => {
    const record = parseRecord({
      version: 1,
      events: [
        {
          type: 'plan',
          entries: [
            { content: 'Read the file', status: 'completed' },
            { content: 'Edit it', status: 'in_progress' },
            { content: 'Test it', status: 'pending' },
            'not an entry'
          ]
        }
      ]
    });
    expect(record.events).toEqual([
      {
        type: 'text',
        text: '**Plan**\n\n- [x] Read the file\n- [ ] *Edit it* (in progress)\n- [ ] Test it'
      }
    ]);
    expect(planMarkdown([])).toBe('**Plan**\n\n');
  });
});
