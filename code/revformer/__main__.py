from .cli import command

if __name__ == "__main__":
    command()
