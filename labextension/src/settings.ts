/**
 * The user's display settings (Settings › Settings Editor › aimu agent runs), shared by every
 * renderer so a change reaches runs already on screen.
 */

import { ISignal, Signal } from '@lumino/signaling';

import { DEFAULT_SETTINGS, DisplaySettings } from './view';

export class Settings {
  private _current: DisplaySettings = { ...DEFAULT_SETTINGS };
  private readonly _changed = new Signal<this, void>(this);

  get current(): DisplaySettings {
    return this._current;
  }

  /** Emitted after `update` changes a value. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  update(next: Partial<DisplaySettings>): void {
    const merged = { ...this._current, ...next };
    if (
      merged.collapseToolCards !== this._current.collapseToolCards ||
      merged.showThinking !== this._current.showThinking
    ) {
      this._current = merged;
      this._changed.emit();
    }
  }
}
