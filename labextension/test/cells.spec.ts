import './dom-events';
import { Widget } from '@lumino/widgets';

import { CELLS_MIME_TYPE, CellsRenderer, parseCells } from '../src/cells';
import { parseRecord, toView } from '../src/model';
import { CellSpec, NotebookCells, ShellLike } from '../src/notebook';
import { InsertCell, RunDom } from '../src/view';
import { Json, PNG_BASE64, run, tool } from './records';

/** A notebook as much as NotebookCells sees of one: cell widgets and a shared model. */
class FakeNotebook {
  readonly node = document.createElement('div');
  readonly content = {
    widgets: [] as { node: HTMLElement; model: FakeCellModel }[],
    model: {
      sharedModel: {
        insertCell: (index: number, cell: CellSpec & { metadata: Record<string, unknown> }) =>
          this.insert(index, cell)
      }
    }
  };
  private next = 0;

  constructor(sources: string[]) {
    sources.forEach((source, index) =>
      this.insert(index, { cell_type: 'code', source, metadata: {} })
    );
  }

  get sources(): string[] {
    return this.content.widgets.map(cell => cell.model.source);
  }

  cell(index: number): HTMLElement {
    return this.content.widgets[index].node;
  }

  private insert(index: number, cell: CellSpec & { metadata: Record<string, unknown> }): void {
    const node = document.createElement('div');
    const model = new FakeCellModel(`cell-${this.next++}`, cell.source, cell.metadata);
    this.content.widgets.splice(index, 0, { node, model });
    this.node.replaceChildren(...this.content.widgets.map(c => c.node));
  }
}

class FakeCellModel {
  constructor(
    readonly id: string,
    readonly source: string,
    private metadata: Record<string, unknown>
  ) {}

  getMetadata(key: string): unknown {
    return this.metadata[key];
  }

  setMetadata(key: string, value: unknown): void {
    this.metadata = { ...this.metadata, [key]: value };
  }
}

function shellOf(...widgets: { node: HTMLElement }[]): ShellLike {
  return { widgets: () => widgets };
}

function output(notebook: FakeNotebook, index: number): HTMLElement {
  const node = document.createElement('div');
  notebook.cell(index).append(node);
  return node;
}

describe('NotebookCells', () => {
  it('inserts below the cell holding the anchor, after cells inserted for it before', () => {
    const notebook = new FakeNotebook(['%%agent\nplot', 'next cell']);
    document.body.replaceChildren(notebook.node);
    const cells = new NotebookCells(shellOf(notebook));
    expect(cells.insertBelow(output(notebook, 0), [{ cell_type: 'code', source: 'a = 1' }])).toBe(
      true
    );
    expect(
      cells.insertBelow(output(notebook, 0), [
        { cell_type: 'code', source: 'b = 2' },
        { cell_type: 'markdown', source: '## c' }
      ])
    ).toBe(true);
    expect(notebook.sources).toEqual(['%%agent\nplot', 'a = 1', 'b = 2', '## c', 'next cell']);
  });

  it('inserts a block once, even when its output is drawn again', () => {
    const notebook = new FakeNotebook(['%agent_export']);
    document.body.replaceChildren(notebook.node);
    const cells = new NotebookCells(shellOf(notebook));
    const block = [{ cell_type: 'code' as const, source: 'x = 1' }];
    cells.insertBelow(output(notebook, 0), block, 'b1');
    cells.insertBelow(output(notebook, 0), block, 'b1');
    expect(notebook.sources).toEqual(['%agent_export', 'x = 1']);
    expect(cells.received(output(notebook, 0), 'b1')).toBe(true);
  });

  it('reports false for an anchor in no notebook cell', () => {
    const notebook = new FakeNotebook(['x']);
    const stray = document.createElement('div');
    expect(new NotebookCells(shellOf(notebook)).insertBelow(stray, [])).toBe(false);
  });
});

describe('python tool cards', () => {
  function draw(record: Json, insertCell?: InsertCell) {
    const dom = new RunDom({
      renderMarkdown: async (host, source) => {
        host.textContent = source;
      },
      settings: () => ({ collapseToolCards: false, showThinking: true }),
      insertCell
    });
    document.body.replaceChildren(dom.node);
    return dom.update(toView(parseRecord(record))).then(() => dom.node);
  }

  const plot = tool('c1', 'python', {
    arguments: { code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2])' },
    status: 'done',
    result: '[image 1: matplotlib figure]',
    images: [{ data: PNG_BASE64, mime_type: 'image/png', description: 'image 1' }]
  });

  it('offer "Insert as cell below", which inserts the call\'s code', async () => {
    const calls: string[] = [];
    const root = await draw(run([plot]), (anchor, source) => {
      calls.push(source);
      return anchor.isConnected;
    });
    const button = root.querySelector<HTMLButtonElement>('button.aimu-insert-cell');
    expect(button?.textContent).toBe('Insert as cell below');
    expect(button?.closest<HTMLElement>('.aimu-tool-insert')?.hidden).toBe(false);
    button?.click();
    expect(calls).toEqual(['import matplotlib.pyplot as plt\nplt.plot([1, 2])']);
    expect(root.querySelector('.aimu-insert-status')?.textContent).toBe(
      'Inserted below the agent cell.'
    );
  });

  it('have no insert button for other tools or without a notebook', async () => {
    const other = tool('c2', 'get_webpage', { arguments: { code: 'x' }, status: 'done' });
    let root = await draw(run([other]), () => true);
    expect(root.querySelector<HTMLElement>('.aimu-tool-insert')?.hidden).toBe(true);
    root = await draw(run([plot]));
    expect(root.querySelector<HTMLElement>('.aimu-tool-insert')?.hidden).toBe(true);
  });

  it('say when the model did not see the images', async () => {
    const note = 'The model did not see the images: it reads text only.';
    const root = await draw(run([{ ...plot, images_note: note }]));
    const shown = root.querySelector<HTMLElement>('.aimu-tool-images-note');
    expect(shown?.hidden).toBe(false);
    expect(shown?.textContent).toBe(note);
  });
});

describe('CellsRenderer', () => {
  function model(data: unknown) {
    return { data: { [CELLS_MIME_TYPE]: data } } as never;
  }
  const block = {
    version: 1,
    id: 'blk',
    origin: 'export',
    cells: [
      { cell_type: 'code', source: 'df = load()' },
      { cell_type: 'raw', source: 'x' }
    ]
  };

  it('keeps code and markdown cells only', () => {
    expect(parseCells(block)?.cells).toEqual([{ cell_type: 'code', source: 'df = load()' }]);
    expect(parseCells({ version: 2, id: 'x', cells: [] })).toBeNull();
  });

  it('inserts its cells below its notebook cell once attached', async () => {
    const notebook = new FakeNotebook(['%agent_export']);
    document.body.replaceChildren(notebook.node);
    const renderer = new CellsRenderer(
      { mimeType: CELLS_MIME_TYPE } as never,
      new NotebookCells(shellOf(notebook))
    );
    await renderer.renderModel(model(block));
    expect(notebook.sources).toEqual(['%agent_export']);
    Widget.attach(renderer, notebook.cell(0));
    expect(notebook.sources).toEqual(['%agent_export', 'df = load()']);
    expect(renderer.node.textContent).toBe('Exported 1 cell below (not run).');
  });

  it('shows the sources to copy outside a notebook', async () => {
    const host = document.createElement('div');
    document.body.replaceChildren(host);
    const renderer = new CellsRenderer(
      { mimeType: CELLS_MIME_TYPE } as never,
      new NotebookCells(shellOf())
    );
    await renderer.renderModel(model(block));
    Widget.attach(renderer, host);
    expect(renderer.node.querySelector('pre')?.textContent).toBe('df = load()');
  });
});
