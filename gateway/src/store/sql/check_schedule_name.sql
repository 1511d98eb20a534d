-- A schedule name, by taskq.is_name's rule.
create or replace function taskq.check_schedule_name(p_name text) returns text language plpgsql immutable as $$
begin
  if p_name is null or not taskq.is_name(p_name) then
    perform taskq.invalid('name', 'must be 1 to 128 letters or digits or . _ - and start with a letter or digit');
  end if;
  return p_name;
end $$;
