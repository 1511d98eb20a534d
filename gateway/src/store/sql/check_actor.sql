-- The actor a verb records in the audit log: 1 to 255 characters.
create or replace function taskq.check_actor(actor text) returns text language plpgsql immutable as $$
begin
  if actor is null or length(actor) = 0 or length(actor) > 255 then
    perform taskq.invalid('actor', 'must be 1 to 255 characters');
  end if;
  return actor;
end $$;
