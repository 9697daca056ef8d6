SELECT "$path" AS path, eventdate
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
  AND (contains(granules, 'G1') OR (granules IS NULL AND strpos(body, 'G1') > 0) OR contains(granules, 'G2') OR (granules IS NULL AND strpos(body, 'G2') > 0))
ORDER BY eventdate, "$path"
