"""Chapter 7: the solution of its exercise."""


def my_parameter_count(vocab_size, max_positions, d_model, d_ff, num_layers):
    d = d_model
    embeddings = vocab_size * d + max_positions * d
    attention = 4 * (d * d + d)  # q_proj, k_proj, v_proj, out_proj
    ffn = (d * d_ff + d_ff) + (d_ff * d + d)  # fc1, fc2
    norms = 2 * (d + d)  # norm1, norm2: weight and bias each
    final_norm = d + d
    head = d * vocab_size + vocab_size  # lm_head has a bias
    block = attention + ffn + norms
    return embeddings + num_layers * block + final_norm + head
