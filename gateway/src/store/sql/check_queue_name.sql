-- A queue name: 1 to 128 letters, digits, . _ -, starting with a letter or digit. Never ':', so the audit
-- log can file flow limits under "flow:<key>" and schedules under "schedule:<name>".
create or replace function taskq.check_queue_name(name text) returns text language plpgsql immutable as $$
begin
  if name is null or name !~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' then
    perform taskq.invalid('queue', 'must be 1 to 128 letters or digits or . _ - and start with a letter or digit');
  end if;
  return name;
end $$;
