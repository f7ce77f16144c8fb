import './dom-events';

import { CommLike, INBOX_TARGET, InboxField, KernelLike, PLACEHOLDER } from '../src/inbox';
import { NotebookCells } from '../src/notebook';

/** A kernel as much as the field sees of one: comms it records. */
class FakeComm implements CommLike {
  readonly opened: Record<string, unknown>[] = [];
  readonly sent: Record<string, unknown>[] = [];
  closed = 0;
  onMsg: CommLike['onMsg'] = null;

  constructor(readonly failOnClose = false) {}

  open(data: Record<string, unknown>): void {
    this.opened.push(data);
  }

  send(data: Record<string, unknown>): void {
    this.sent.push(data);
  }

  close(): void {
    this.closed += 1;
    if (this.failOnClose) {
      throw new Error('kernel gone');
    }
  }

  answer(data: Record<string, unknown>): void {
    void this.onMsg?.({ content: { data } });
  }
}

function kernel(comm: FakeComm): KernelLike & { targets: string[] } {
  const targets: string[] = [];
  return {
    targets,
    createComm: (target: string) => {
      targets.push(target);
      return comm;
    }
  };
}

function type(field: InboxField, text: string): void {
  const input = field.node.querySelector('input') as HTMLInputElement;
  input.value = text;
  field.node.dispatchEvent(new Event('submit', { cancelable: true }));
}

describe('the "tell the agent…" field', () => {
  it('claims the run and stays hidden until the kernel says to draw it', () => {
    const comm = new FakeComm();
    const host = kernel(comm);
    const field = new InboxField('run-1', host);
    expect(host.targets).toEqual([INBOX_TARGET]);
    expect(comm.opened).toEqual([{ run: 'run-1' }]);
    expect(field.node.hidden).toBe(true);
    comm.answer({ draw: true });
    expect(field.node.hidden).toBe(false);
    const input = field.node.querySelector('input') as HTMLInputElement;
    expect(input.placeholder).toBe(PLACEHOLDER);
  });

  it('sends trimmed text, clears the input and says what was sent', () => {
    const comm = new FakeComm();
    const field = new InboxField('run-1', kernel(comm));
    comm.answer({ draw: true });
    type(field, '  Use metric units.  ');
    expect((field.node.querySelector('input') as HTMLInputElement).value).toBe('');
    expect(field.node.textContent).toContain('Sending: Use metric units.…');
    type(field, '   ');
    expect(comm.sent).toEqual([{ text: 'Use metric units.' }]);
    comm.answer({ sent: 'Use metric units.' });
    expect(field.node.textContent).toContain('Sent: Use metric units.');
  });

  it('says the newest message is sending until the kernel acknowledges that one', () => {
    const comm = new FakeComm();
    const field = new InboxField('run-1', kernel(comm));
    comm.answer({ draw: true });
    type(field, 'first');
    type(field, 'second');
    comm.answer({ sent: 'first' }); // a slow kernel answers the first after the second left
    expect(field.node.textContent).toContain('Sending: second…');
    expect(field.node.textContent).not.toContain('first');
    comm.answer({ sent: 'second' });
    expect(field.node.textContent).toContain('Sent: second');
  });

  it('goes away when the kernel already shows a box for the run', () => {
    const comm = new FakeComm();
    const parent = document.createElement('div');
    const field = new InboxField('run-1', kernel(comm));
    parent.append(field.node);
    comm.answer({ draw: false });
    expect(parent.children.length).toBe(0);
    expect(comm.closed).toBe(1);
    type(field, 'too late');
    expect(comm.sent).toEqual([]);
  });

  it('keeps text typed but not sent when the run ends, saying it was not sent', () => {
    const comm = new FakeComm();
    const parent = document.createElement('div');
    const field = new InboxField('run-1', kernel(comm));
    parent.append(field.node);
    comm.answer({ draw: true });
    (field.node.querySelector('input') as HTMLInputElement).value = 'also check April';
    field.dispose();
    expect(parent.textContent).toBe('Not sent (the run ended first): also check April');
    expect(comm.sent).toEqual([]);
  });

  it('is disposed quietly even when the kernel is gone', () => {
    const comm = new FakeComm(true);
    const field = new InboxField('run-1', kernel(comm));
    expect(() => field.dispose()).not.toThrow();
    expect(() => field.dispose()).not.toThrow();
    expect(comm.closed).toBe(1);
  });

  it("finds the kernel of the notebook holding the run's output", () => {
    const comm = new FakeComm();
    const output = document.createElement('div');
    const cellNode = document.createElement('div');
    cellNode.append(output);
    const panel = {
      node: document.createElement('div'),
      content: { widgets: [{ node: cellNode, model: {} }], model: { sharedModel: {} } },
      sessionContext: { session: { kernel: kernel(comm) } }
    };
    panel.node.append(cellNode);
    const elsewhere = { node: document.createElement('div') };
    const cells = new NotebookCells({ widgets: () => [elsewhere, panel] });
    expect(cells.kernelOf(output)).toBe(panel.sessionContext.session.kernel);
    expect(cells.kernelOf(document.createElement('div'))).toBeNull();
  });
});
