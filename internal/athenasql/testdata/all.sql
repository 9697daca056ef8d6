SELECT "$path" AS path, eventdate
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
  AND (contains(granules, 'G1') OR (granules IS NULL AND strpos(body, 'G1') > 0))
  AND (collectionid = 'C___1' OR (collectionid IS NULL AND strpos(body, 'C') > 0))
  AND (upper(status) = 'RUNNING' OR status IS NULL)
  AND (regexp_like(error, 'x') OR (error IS NULL AND status IS NULL))
ORDER BY eventdate, "$path"
