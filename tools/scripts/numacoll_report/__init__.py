"""numacoll-plot's modules: the headline plots and table (headline), the four papers'
sections (papers_barrier, papers_bcast, papers_kv) and what they share (common).
paper_numbers.json holds the numbers the papers report, for the tables beside ours."""
