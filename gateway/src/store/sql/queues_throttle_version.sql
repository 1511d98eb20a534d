-- Gives every throttle change a new version (bump_throttle_version).
create or replace trigger queues_throttle_version before insert or update on taskq.queues
  for each row execute function taskq.bump_throttle_version();
