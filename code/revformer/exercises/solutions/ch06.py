"""Chapter 6: the solution of its exercise."""


def my_split_heads(x, num_heads):
    b, t, d = x.shape
    x = x.view(b, t, num_heads, d // num_heads)  # [B,T,H,Dh]
    return x.transpose(1, 2)  # [B,H,T,Dh]


def my_merge_heads(x):
    b, h, t, dh = x.shape
    # transpose gives a strided view; contiguous() copies it into the order view needs
    return x.transpose(1, 2).contiguous().view(b, t, h * dh)  # [B,T,H,Dh] -> [B,T,D]
