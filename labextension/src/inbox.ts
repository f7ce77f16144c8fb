/**
 * The "tell the agent…" field of a running agent, drawn inside the run's own output.
 *
 * A running record names its inbox (`inbox`, a key). The field opens a comm on target
 * `aimu.inbox` with `{run: key}` on the notebook's kernel and shows itself only when the
 * kernel answers `{draw: true}` (it refuses when it already showed a widget box). Each text
 * sent goes to the kernel as `{text}`; the kernel answers `{sent: text}`, and the field says
 * "Sent" once the newest text is answered. When the record no longer names the inbox (the
 * run ended) the renderer disposes of the field: nothing is left behind in the cell or the
 * saved notebook.
 */

export const INBOX_TARGET = 'aimu.inbox';
export const PLACEHOLDER = 'tell the agent…';

export interface CommLike {
  open(data: Record<string, unknown>): unknown;
  send(data: Record<string, unknown>): unknown;
  close(): unknown;
  onMsg: ((msg: { content: { data: unknown } }) => void | PromiseLike<void>) | null;
  onClose?: ((msg: unknown) => void | PromiseLike<void>) | null;
}

export interface KernelLike {
  createComm(targetName: string): CommLike;
}

export class InboxField {
  readonly node = document.createElement('form');
  private readonly input = document.createElement('input');
  private readonly status = document.createElement('div');
  private comm: CommLike | null;
  /** The message sent last: the status speaks of it, whatever the kernel answers first. */
  private latest = '';

  constructor(
    readonly key: string,
    kernel: KernelLike
  ) {
    this.node.className = 'aimu-inbox-field';
    this.node.hidden = true;
    this.input.type = 'text';
    this.input.placeholder = PLACEHOLDER;
    this.input.setAttribute('aria-label', 'Message for the running agent');
    this.input.className = 'aimu-inbox-input';
    const send = document.createElement('button');
    send.type = 'submit';
    send.className = 'aimu-inbox-send';
    send.textContent = 'Send';
    this.status.className = 'aimu-inbox-status';
    this.status.setAttribute('aria-live', 'polite');
    const row = document.createElement('div');
    row.className = 'aimu-inbox-row';
    row.append(this.input, send);
    this.node.append(row, this.status);
    this.node.addEventListener('submit', event => {
      event.preventDefault();
      this.submit();
    });
    // Keys typed here are the field's, not the notebook's command shortcuts.
    this.input.addEventListener('keydown', event => event.stopPropagation());
    this.comm = kernel.createComm(INBOX_TARGET);
    this.comm.onMsg = msg => this.onMessage(msg.content.data);
    this.comm.open({ run: key });
  }

  /**
   * Remove the field once the run ended. Text typed but not sent is kept where the field
   * was, saying it was not sent, so nothing the person wrote vanishes silently.
   */
  dispose(): void {
    const unsent = this.input.value.trim();
    if (unsent && !this.node.hidden && this.comm) {
      const note = document.createElement('div');
      note.className = 'aimu-inbox-unsent';
      note.textContent = `Not sent (the run ended first): ${unsent}`;
      this.node.replaceWith(note);
    } else {
      this.node.remove();
    }
    const comm = this.comm;
    this.comm = null;
    try {
      comm?.close();
    } catch {
      // The kernel may already be gone; there is nothing left to tell it.
    }
  }

  private onMessage(data: unknown): void {
    const message = (data ?? {}) as { draw?: unknown; sent?: unknown };
    if (message.draw === true) {
      this.node.hidden = false;
    } else if (message.draw === false) {
      this.dispose();
    } else if (typeof message.sent === 'string' && message.sent === this.latest) {
      this.status.textContent = `Sent: ${message.sent} (the agent reads it before its next model turn)`;
    }
  }

  private submit(): void {
    const text = this.input.value.trim();
    if (!text || !this.comm) {
      return;
    }
    this.latest = text;
    this.comm.send({ text });
    this.input.value = '';
    this.status.textContent = `Sending: ${text}…`; // at once; the kernel's answer follows
  }
}
