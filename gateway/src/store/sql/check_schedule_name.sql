-- A schedule name, by the rule for queue names.
create or replace function taskq.check_schedule_name(p_name text) returns text language plpgsql immutable as $$
begin
  if p_name is null or p_name !~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' then
    perform taskq.invalid('name', 'must be 1 to 128 letters or digits or . _ - and start with a letter or digit');
  end if;
  return p_name;
end $$;
