/**
 * The status bar item: the configured notes folder's index state (consistent / stale with lag /
 * refreshing / failed-with-last-good). One request at a time on a steady interval, backing off on
 * errors and standing by while the page is hidden; a click refreshes the index.
 */
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import { IIndexStatus, post, requestAPI } from './api';

const LABEL: Record<string, string> = {
  consistent: 'consistent',
  stale: 'stale',
  refreshing: 'refreshing…',
  failed_with_last_good: 'refresh failed (last good)',
  unconfigured: 'no notes folder'
};

export class IndexStatus extends Widget {
  constructor(interval = 5000) {
    super();
    this.addClass('rk-status');
    this.node.textContent = 'Notes: …';
    this.node.addEventListener('click', () => void this.refresh());
    this.poll = new Poll({
      factory: () => this.update_(),
      frequency: { interval, backoff: true, max: 60_000 },
      standby: 'when-hidden',
      name: 'retrieval-kernel:index-status'
    });
  }

  /** Ask for the state now (after a query, which may have refreshed). */
  check(): void {
    void this.poll.refresh();
  }

  async refresh(): Promise<void> {
    if (this.node.dataset.state === 'unconfigured' || this.node.dataset.state === 'refreshing') {
      return;
    }
    this.render({ configured: true, state: 'refreshing', reason: 'refreshing the index' });
    try {
      this.render(await post<IIndexStatus>('refresh', {}));
    } catch (error) {
      this.render({ configured: true, state: 'error', reason: (error as Error).message });
    }
  }

  dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  private async update_(): Promise<void> {
    try {
      this.render(await requestAPI<IIndexStatus>('status'));
    } catch (error) {
      this.render({ configured: true, state: 'error', reason: (error as Error).message });
      throw error; // the poll backs off
    }
  }

  private render(status: IIndexStatus): void {
    const lag = Math.max(0, ...(status.projections ?? []).map(p => p.lag));
    let label = LABEL[status.state] ?? status.state;
    if (status.state === 'stale') {
      label += ` (lag ${lag})`;
    }
    this.node.textContent = `Notes: ${label}`;
    this.node.dataset.state = status.state;
    const where = status.notes_dir ? `${status.notes_dir}\n` : '';
    const click = status.configured ? '\nClick to refresh the index.' : '';
    this.node.title = `${where}${status.reason}${click}`;
  }

  private poll: Poll;
}
