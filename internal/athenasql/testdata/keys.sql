SELECT "$path" AS path, eventdate, error
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
  AND (error IS NULL OR error IN ('KnexTimeoutError: can''t acquire a connection'))
ORDER BY eventdate, "$path"
