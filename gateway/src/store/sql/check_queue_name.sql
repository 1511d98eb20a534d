-- A queue name, by taskq.is_name's rule.
create or replace function taskq.check_queue_name(name text) returns text language plpgsql immutable as $$
begin
  if name is null or not taskq.is_name(name) then
    perform taskq.invalid('queue', 'must be 1 to 128 letters or digits or . _ - and start with a letter or digit');
  end if;
  return name;
end $$;
