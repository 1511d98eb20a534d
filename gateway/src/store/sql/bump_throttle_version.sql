-- Every throttle change gets a new version, which the limiter compares with the version its slot was
-- taken under: a change or removal drops the old slot at the next claim, on every gateway. Any change
-- of limit, period or source (removal included) takes the next version.
create or replace function taskq.bump_throttle_version() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' or (new.throttle_limit, new.throttle_period_ms, new.throttle_source)
      is distinct from (old.throttle_limit, old.throttle_period_ms, old.throttle_source) then
    new.throttle_version := nextval('taskq.throttle_versions');
  end if;
  return new;
end $$;
