import type { Waiters } from "../claim/waiters.js";
import type { Profiles } from "../flow/profiles.js";
import type { SettingsNotices } from "../flow/settings-notices.js";
import type { Logger } from "../log.js";
import type { Db } from "../store/db.js";
import { FLOW_LIMITS_CHANNEL, QUEUES_CHANNEL } from "../store/queue-store.js";
import { READY_CHANNEL } from "../store/store.js";

/**
 * LISTENs for ready jobs (wakes long polls) and settings changes (drops cached profiles). A lost
 * connection wakes every poll, forgets every cached profile, and is re-established.
 */
export async function listenForChanges(
  db: Db,
  waiters: Waiters,
  profiles: Profiles,
  notices: SettingsNotices,
  log: Logger,
): Promise<() => Promise<void>> {
  let stopped = false;
  let unlisten: (() => Promise<void>) | undefined;
  let retry: NodeJS.Timeout | undefined;
  const again = (err: Error) => {
    if (stopped) return;
    log.warn({ err: err.message }, "LISTEN connection lost or failed; retrying in 1 s");
    // Notifications may be missed meanwhile: let every parked poll look again, re-read settings.
    waiters.wakeAll();
    profiles.clear();
    retry = setTimeout(() => void connect(), 1000);
  };
  const connect = async (): Promise<void> => {
    try {
      unlisten = await db.listen(
        [READY_CHANNEL, QUEUES_CHANNEL, FLOW_LIMITS_CHANNEL],
        (channel, payload) => {
          if (channel === READY_CHANNEL) waiters.wake(payload);
          else if (channel === QUEUES_CHANNEL) {
            profiles.queueChanged(payload);
            waiters.settingsChanged(payload);
            notices.notified(payload);
          } else {
            profiles.flowLimitChanged();
            waiters.allSettingsChanged();
          }
        },
        again,
      );
      waiters.wakeAll();
      profiles.clear();
    } catch (err) {
      again(err as Error);
    }
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await unlisten?.();
  };
}
